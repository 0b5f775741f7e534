#!/usr/bin/env bash
# realnode-deps.sh: makes sure the Debian packages the real node needs are
# installed (containerd, runc, the CNI plugins, busybox-static for the pause
# image, iproute2 for the bridge). As root it installs what is missing with
# apt-get; otherwise it names what is missing and the command that installs
# it, and fails.
set -euo pipefail
need=()
have() { command -v "$1" >/dev/null 2>&1 || [ -x "$1" ]; }
have containerd || need+=(containerd)
have ctr || need+=(containerd)
have runc || need+=(runc)
have /usr/lib/cni/bridge || need+=(containernetworking-plugins)
have /usr/lib/cni/host-local || need+=(containernetworking-plugins)
have /bin/busybox || need+=(busybox-static)
have ip || need+=(iproute2)
if [ ${#need[@]} -eq 0 ]; then
  exit 0
fi
# Unique, in order.
mapfile -t need < <(printf '%s\n' "${need[@]}" | awk '!seen[$0]++')
if [ "$(id -u)" != 0 ]; then
  echo "The real node needs these Debian packages, which are missing: ${need[*]}" >&2
  echo "Install them as root:  apt-get update && apt-get install -y ${need[*]}" >&2
  exit 1
fi
echo ">> installing ${need[*]} (real node)"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
echo "   installed ${need[*]}"
