// unwind-throw.cc — a C++ program for tests/test-unwind.sh that spends its
// time throwing exceptions through several frames: main → throw_loop →
// thrower1 → thrower2 → thrower3 → __cxa_throw, then the unwinder of
// libgcc_s and the personality routine of libstdc++, all without frame
// pointers.  Usage: unwind-throw SECONDS
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

static volatile unsigned long sink;

__attribute__((noinline)) void thrower3(int i)
{
	if (i >= 0)
		throw std::runtime_error("unwind me");
	sink = sink + 1;
}

__attribute__((noinline)) void thrower2(int i)
{
	thrower3(i + 1);
	sink = sink + 2;
}

__attribute__((noinline)) void thrower1(int i)
{
	thrower2(i + 1);
	sink = sink + 3;
}

__attribute__((noinline)) void throw_loop(double secs)
{
	auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(secs);
	while (std::chrono::steady_clock::now() < end) {
		for (int i = 0; i < 1000; i++) {
			try {
				thrower1(i);
			} catch (const std::exception &e) {
				sink = sink + e.what()[0];
			}
		}
	}
}

int main(int argc, char **argv)
{
	throw_loop(argc > 1 ? std::atof(argv[1]) : 2.0);
	return 0;
}
