// tmpl.cpp — a C++ program for the perf-script importer fixtures: symbols
// with templates, namespaces, an anonymous namespace and operators, so the
// tidy rules (cut at the first "(", keep "(anonymous namespace)") get
// exercised on real perf output.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace geo {
template <typename T> struct Vec {
	T x, y;
	Vec operator+(const Vec &o) const { return Vec{x + o.x, y + o.y}; }
	bool operator<(const Vec &o) const { return x < o.x || (x == o.x && y < o.y); }
};

template <typename T>
__attribute__((noinline)) T accumulate(const std::vector<Vec<T>> &v)
{
	Vec<T> s{0, 0};
	for (const auto &e : v)
		s = s + e;
	return s.x + s.y;
}
} // namespace geo

namespace {
__attribute__((noinline)) long churn_map(int n)
{
	std::map<geo::Vec<long>, std::string> m;
	for (int i = 0; i < n; i++)
		m[geo::Vec<long>{i % 97, i % 89}] += "x";
	return (long)m.size();
}
} // namespace

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? std::atoi(argv[1]) : 300;
	std::vector<geo::Vec<double>> v(20000, geo::Vec<double>{1.5, 2.5});
	double total = 0;
	long sz = 0;
	for (int r = 0; r < rounds; r++) {
		total += geo::accumulate(v);
		sz += churn_map(2000);
	}
	std::printf("%f %ld\n", total, sz);
	return 0;
}
