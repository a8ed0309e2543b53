/*
 * console_ctx: the console's state and the services screens call on it
 * (see console_ctx.h). A switch of screen is only asked for here
 * (next_screen); console.c, which holds the table of screens, makes it.
 */
#include "console_ctx.h"

#include <stdarg.h>
#include <stdio.h>

#include "clock.h"
#include "tokens.h"

void
console_msg(struct console *c, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(c->msg, sizeof c->msg, fmt, ap);
	va_end(ap);
	c->msg_err = err;
	c->msg_at = clock_mono_ms();
}

int
console_can_operate(struct console *c)
{
	if (c->cli->role == ROLE_VIEWER || c->cli->role == ROLE_CALLER) {
		console_msg(
			c, 1,
			"read-only: this token is a %s's; operator actions need an operator token",
			role_name((enum role)c->cli->role));
		return 0;
	}
	return 1;
}

void
console_send(struct console *c, const char *label, const char *method, const char *path,
	     const char *body)
{
	struct sent_action *a = &c->actions[c->nactions++ % CONSOLE_ACTIONS];

	a->tag = fetch_action(c->fetch, method, path, body);
	snprintf(a->label, sizeof a->label, "%s", label);
	console_msg(c, 0, "%s: sending %s %s ...", label, method, path);
}

void
console_form(struct console *c, const struct form *f)
{
	c->form = *f;
	form_open(&c->form, c);
}

const char *
console_filter(const struct console *c, int screen)
{
	return c->filter[screen];
}

const char *
console_ep_error(const struct console *c, enum fetch_kind k)
{
	if (!c->ep[k].seen || c->ep[k].ok)
		return NULL;
	return c->ep[k].err;
}

void
console_switch(struct console *c, int i)
{
	c->next_screen = i;
}

void
console_route_select(struct console *c, const char *route)
{
	snprintf(c->route_select, sizeof c->route_select, "%s", route);
	console_switch(c, SCR_ROUTES);
}
