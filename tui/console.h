#pragma once
/*
 * console: the ncurses console (`fusebox` without a verb). One UI thread
 * runs the loop: poll() on the terminal and on the fetch thread's pipe,
 * merge finished transfers into the model, hand keys to the current screen
 * and redraw — erase the virtual screen, draw, one doupdate(), so only the
 * cells that changed reach the terminal. All HTTP happens on the fetch
 * thread; the UI never waits on the daemon.
 *
 * The screens (tui/screen_*.c) are collected in one table here; what they
 * may call on the console is console_ctx.h.
 */
#include "client.h"

/* Run the console until q. 0, or 1 when it cannot start (message printed). */
int console_run(struct client *cli);
