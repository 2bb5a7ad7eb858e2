#!/usr/bin/env bash
# Installs everything flamefs needs to build, test and demo on Debian 12.
# Run as root (or as a user with sudo).  Safe to run again: it does nothing
# when every package is there already.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
pkgs=(
	build-essential meson ninja-build pkg-config clang llvm clang-format
	libfuse3-dev fuse3 libbpf-dev bpftool libelf-dev libdw-dev libiberty-dev
	librocksdb-dev libzstd-dev zstd libprotobuf-c-dev protobuf-c-compiler
	zlib1g-dev libxxhash-dev golang-go valgrind linux-perf google-perftools libgoogle-perftools-dev
	perl python3 python3.11 libpython3.11-dev procps psmisc util-linux
	openjdk-17-jdk-headless nodejs
	scdoc bash-completion graphviz man-db groff-base bsdextrautils systemd
	libxml2-utils chromium
	systemtap-sdt-dev
	postgresql-15 libpq-dev
	debuginfod
)
# debuginfod: tests/test-symbolize-later.sh serves debug files with a real
# server (debuginfod -F DIR) and names frames through it.
# openjdk-17-jdk-headless and nodejs: tests/test-jit.sh records a JVM and node
# with their JIT perf maps.
# systemtap-sdt-dev: <sys/sdt.h> for contrib/spans-demo.c's USDT probes.
# postgresql-15 creates and starts the cluster 15/main (port 5432,
# /var/run/postgresql) on install.  It is left alone: the tests start
# private servers of their own (tests/lib-pg.sh: a socket in the test's
# directory, no TCP port) and never connect to it.
# Nothing to do (and no network needed) when every package is installed.
missing=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package}\n' "${pkgs[@]}" 2>&1 |
	awk '$1 != "ii" { n++ } END { print n + 0 }') || missing=1
[ "$missing" = 0 ] && exit 0
SUDO=
if [ "$(id -u)" -ne 0 ]; then
	command -v sudo >/dev/null || { echo "install-deps.sh: needs root: run it as root, or install sudo" >&2; exit 1; }
	SUDO=sudo
fi
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null
