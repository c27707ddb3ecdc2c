#!/usr/bin/env bash
# Installs tesserad as a systemd service on one board (or into a staging root for an image).
#
#   deploy/systemd/install-board.sh [--build-dir build] [--prefix /usr/local] [--root /]
#                                   [--board zcu102] [--enable]
#
# --build-dir DIR  first runs `cmake --install DIR --prefix PREFIX` (into ROOT); without it the
#                  tree must already be installed under ROOT/PREFIX.
# --prefix P       where bin/tesserad and share/tessera live (default /usr/local); the unit's and the
#                  config's paths are rewritten from /usr/local to P.
# --root R         a staging root (default /): files go below R; the user, groups and systemctl
#                  steps only run when R is /.
# --board NAME     the board profile the config names (default zcu102; aws-f1 on F1).
# --enable         systemctl enable --now tesserad afterwards (R = / only).
# An existing /etc/tessera/tesserad.toml is kept; the example goes next to it as .dist.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
deploy_dir=$(dirname "$here")
build_dir="" prefix=/usr/local root=/ board=zcu102 enable=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build-dir) build_dir=$2; shift 2 ;;
    --prefix) prefix=$2; shift 2 ;;
    --root) root=$2; shift 2 ;;
    --board) board=$2; shift 2 ;;
    --enable) enable=1; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "install-board: unknown argument $1" >&2; exit 2 ;;
  esac
done
case "$prefix" in /*) ;; *) echo "install-board: --prefix must be absolute" >&2; exit 2 ;; esac
root=${root%/}
staged() { printf '%s%s' "$root" "$1"; }

if [ -n "$build_dir" ]; then
  DESTDIR="$root" cmake --install "$build_dir" --prefix "$prefix" >/dev/null
fi
[ -x "$(staged "$prefix/bin/tesserad")" ] || { echo "install-board: no $(staged "$prefix/bin/tesserad")" >&2; exit 1; }
[ -f "$(staged "$prefix/share/tessera/boards/$board.toml")" ] || {
  echo "install-board: no board profile '$board' in $(staged "$prefix/share/tessera/boards")" >&2; exit 1; }

rewrite() { sed -e "s#/usr/local#${prefix%/}#g" "$@"; }

install -d -m 0755 "$(staged /etc/systemd/system)" "$(staged /etc/tessera)"
rewrite "$here/tesserad.service" > "$(staged /etc/systemd/system/tesserad.service)"
chmod 0644 "$(staged /etc/systemd/system/tesserad.service)"

config=$(staged /etc/tessera/tesserad.toml)
target=$config
[ -e "$config" ] && target=$config.dist
rewrite "$deploy_dir/tesserad.toml" | sed -e "s#^board = \"[^\"]*\"#board = \"$board\"#" > "$target"
chmod 0644 "$target"

# XRT: Xilinx's packages live in /opt/xilinx/xrt; with Debian's libxrt1 the daemon makes its own
# prefix, which an empty XILINX_XRT asks for.
environment=$(staged /etc/tessera/environment)
if [ ! -e "$environment" ]; then
  if [ -d "$(staged /opt/xilinx/xrt/lib)" ]; then echo "XILINX_XRT=/opt/xilinx/xrt"; else echo "XILINX_XRT="; fi > "$environment"
  chmod 0644 "$environment"
fi

if [ "$root" != "" ]; then
  echo "install-board: staged into $root (user, groups and systemctl skipped)"
  exit 0
fi
getent group tessera >/dev/null || groupadd --system tessera
getent passwd tessera >/dev/null ||
  useradd --system --gid tessera --home-dir /nonexistent --no-create-home --shell /usr/sbin/nologin tessera
for g in render video; do getent group "$g" >/dev/null && usermod -a -G "$g" tessera; done
systemctl daemon-reload
if [ "$enable" = 1 ]; then systemctl enable --now tesserad; fi
echo "install-board: installed; start with 'systemctl enable --now tesserad', logs: journalctl -u tesserad -f"
