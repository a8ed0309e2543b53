-- wrk script: POST the body in $WRK_BODY (JSON) on every request.
wrk.method = "POST"
wrk.body = os.getenv("WRK_BODY") or "{}"
wrk.headers["Content-Type"] = "application/json"
