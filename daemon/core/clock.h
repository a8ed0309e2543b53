#pragma once
/*
 * clock: the only module that reads clocks (STYLE.md rule 8). Pure modules
 * take now_ms arguments; I/O modules call these. Thread-safe.
 */
#include <stdint.h>

/* Monotonic milliseconds / microseconds (CLOCK_MONOTONIC). */
int64_t clock_mono_ms(void);
int64_t clock_mono_us(void);
/* Wall clock, Unix epoch milliseconds (CLOCK_REALTIME). */
int64_t clock_wall_ms(void);
/* Convert a monotonic instant to wall-clock epoch ms (for display and rows). */
int64_t clock_mono_to_wall_ms(int64_t mono_ms);
