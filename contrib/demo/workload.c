/*
 * workload.c — a small program with a known shape, for the demo.
 *
 * main → serve → handle_request → parse_headers / hash_body / render_page,
 * where hash_body takes about half the CPU, parse_headers a third, and
 * render_page the rest.  Runs for the number of seconds given (default 3).
 * Built with frame pointers so perf and the BPF collector can walk it.
 *
 * Each request's length is scaled by a pseudo-random factor from 1 to 8
 * (the same for its three parts, so the shares stay): with a fixed length
 * a request could take about as long as a sampler's period, and the two
 * would beat against each other, so that a short recording could show
 * parse_headers above hash_body.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

static volatile uint64_t sink;

static __attribute__((noinline)) void publish(uint64_t h)
{
	sink += h;
}

/* Not a leaf (it calls publish), so the compiler keeps its frame pointer
 * and a frame-pointer unwind sees spin's caller. */
static __attribute__((noinline)) void spin(uint64_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (uint64_t i = 0; i < n; i++)
		h = (h ^ i) * 1099511628211ull;
	publish(h);
}

static __attribute__((noinline)) void parse_headers(uint64_t k)
{
	spin(300000 * k);
}
static __attribute__((noinline)) void hash_body(uint64_t k)
{
	spin(450000 * k);
}
static __attribute__((noinline)) void render_page(uint64_t k)
{
	spin(150000 * k);
}

static __attribute__((noinline)) void handle_request(uint64_t k)
{
	parse_headers(k);
	hash_body(k);
	render_page(k);
}

static __attribute__((noinline)) void serve(double seconds)
{
	struct timespec a, b;
	uint64_t x = 88172645463325252ull;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do {
		for (int i = 0; i < 10; i++) {
			/* xorshift64: a request of 1 to 8 units */
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			handle_request(1 + (x >> 61));
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
	} while ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9 < seconds);
}

int main(int argc, char **argv)
{
	serve(argc > 1 ? atof(argv[1]) : 3.0); /* sink is volatile: the work stays */
	return 0;
}
