#!/usr/bin/env bash
# Installs everything flamefs needs to build, test and demo on Debian 12.
# Run as root (or through sudo).  Safe to run again.
set -euo pipefail
export DEBIAN_FRONTEND=noninteractive
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
	build-essential meson ninja-build pkg-config clang llvm clang-format \
	libfuse3-dev fuse3 libbpf-dev bpftool libelf-dev libdw-dev libiberty-dev \
	librocksdb-dev libzstd-dev zstd libprotobuf-c-dev protobuf-c-compiler \
	zlib1g-dev libxxhash-dev golang-go valgrind linux-perf google-perftools libgoogle-perftools-dev \
	perl python3 procps psmisc util-linux \
	scdoc bash-completion graphviz man-db groff-base bsdextrautils systemd >/dev/null
