#!/usr/bin/env bash
# Makes the root filesystem of a small image for the Docker runner's tests, as a tar on
# stdout, from this host's own files: bash, the coreutils the tests run, setsid, Debian's
# python3 with its standard library, and every shared library they load (found with ldd).
# No registry is needed: `docker import - IMAGE` turns the tar into an image.
# Usage: python_rootfs.sh > rootfs.tar
set -euo pipefail

python=$(readlink -f /usr/bin/python3)
stdlib=$(dirname "$python")/../lib/$(basename "$python")
stdlib=$(readlink -f "$stdlib")
[ -d "$stdlib" ] || { echo "no standard library at $stdlib for $python" >&2; exit 1; }

programs=(bash sh sleep env true false cat echo id ls mkdir rm stat touch setsid kill chmod
  head tail wc sort grep)
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT

# /bin, /lib, /lib64 and /sbin are links into /usr on a merged-/usr host (Debian 12).
mkdir -p "$stage"/usr/{bin,lib,lib64,sbin} "$stage"/{etc,root,tmp,proc,sys,dev}
for d in bin lib lib64 sbin; do ln -s "usr/$d" "$stage/$d"; done
chmod 1777 "$stage/tmp"
chmod 0700 "$stage/root"

# A path on this host → the same path in the image, with /bin etc. spelled under /usr.
in_usr() {
  case "$1" in
  /bin/* | /lib/* | /lib64/* | /sbin/*) echo "/usr$1" ;;
  *) echo "$1" ;;
  esac
}

copy() { # copies the file (followed through links) to its path in the image
  local dest
  dest="$stage$(in_usr "$1")"
  [ -e "$dest" ] && return 0
  mkdir -p "$(dirname "$dest")"
  cp -L "$1" "$dest"
}

elves=()
for p in "${programs[@]}"; do
  path=$(type -P "$p" || true)
  case "$path" in
  /*) ;;
  *) echo "program $p not found" >&2; exit 1 ;;
  esac
  # A version manager's shim is not the program: take the system's.
  [ -x "/usr/bin/$p" ] && path="/usr/bin/$p"
  copy "$path"
  elves+=("$path")
done
copy "$python"
ln -s "$(basename "$python")" "$stage/usr/bin/python3"
ln -s "$(basename "$python")" "$stage/usr/bin/python"
elves+=("$python")

# The standard library, without the files for building extensions or its own tests.
mkdir -p "$stage$stdlib"
tar -C "$stdlib" --dereference --exclude='./config-*' --exclude='./test' -cf - . 2>/dev/null |
  tar -C "$stage$stdlib" -xf -
while IFS= read -r so; do elves+=("$so"); done < <(find "$stdlib/lib-dynload" -name '*.so')

# The C++ runtime and glibc's compatibility libraries that compiled wheels (PyTorch, NumPy)
# load; a test mounts such a virtualenv into the container.
for lib in libstdc++.so.6 libgcc_s.so.1 libpthread.so.0 libdl.so.2 librt.so.1 libutil.so.1; do
  found=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ {print $NF; exit}')
  [ -n "$found" ] && elves+=("$found")
done

for elf in "${elves[@]}"; do
  while IFS= read -r lib; do copy "$lib"; done < <(
    ldd "$elf" 2>/dev/null | awk '/=> \// {print $3} /^[ \t]*\/[^ ]+ \(/ {print $1}'
  )
  copy "$elf"
done

cat >"$stage/etc/passwd" <<'EOF'
root:x:0:0:root:/root:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
EOF
cat >"$stage/etc/group" <<'EOF'
root:x:0:
nogroup:x:65534:
EOF

tar -C "$stage" -cf - .
