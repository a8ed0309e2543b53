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
#include <curses.h>

#include "client.h"

/* Run the console until q. 0, or 1 when it cannot start (message printed). */
int console_run(struct client *cli);

/*
 * For the fleet console (fleet_console.h): set up the terminal (0, or 1
 * with a message printed), and restore it.
 */
int console_term_open(SCREEN **scr);
void console_term_close(SCREEN *scr);
/*
 * The single-daemon screens for one host of a fleet on an open terminal,
 * name in the title; Esc (nothing else to close) goes back. 1: back to the
 * fleet views; 0: q or a signal (quit); 2: could not start.
 */
int console_run_host(struct client *cli, const char *name);
/* A signal (^C, SIGTERM, SIGHUP) asked the console to stop. */
int console_stopped(void);
