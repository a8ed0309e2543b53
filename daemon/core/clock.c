/*
 * clock: monotonic and wall clocks.
 */
#include "clock.h"

#include <time.h>

static int64_t
ts_us(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t
clock_mono_ms(void)
{
	return ts_us(CLOCK_MONOTONIC) / 1000;
}

int64_t
clock_mono_us(void)
{
	return ts_us(CLOCK_MONOTONIC);
}

int64_t
clock_wall_ms(void)
{
	return ts_us(CLOCK_REALTIME) / 1000;
}

int64_t
clock_mono_to_wall_ms(int64_t mono_ms)
{
	return clock_wall_ms() - (clock_mono_ms() - mono_ms);
}
