#pragma once
/*
 * rng: xoshiro256** pseudo-random numbers. The only module that reads
 * entropy (rng_seed_entropy); pure modules take a struct rng * so tests can
 * seed it with literals. Not thread-safe: one struct per thread.
 */
#include <stdint.h>

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
void rng_seed_entropy(struct rng *r);
uint64_t rng_u64(struct rng *r);
/* Uniform double in [0, 1). */
double rng_double(struct rng *r);
