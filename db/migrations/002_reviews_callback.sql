-- 002_reviews_callback: where a review correction is pushed.
--
-- The call's callback_url (API.md: "a correction ... pushed to the call's
-- callback_url when one was given"), copied onto the review item when it is
-- enqueued, so that a decision taken days later (or after a restart) still
-- knows where to POST the review_correction. NULL: no callback.
-- Applied by store.c inside one transaction; do not add BEGIN/COMMIT here.

ALTER TABLE reviews ADD COLUMN callback_url TEXT;
