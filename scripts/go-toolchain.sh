# Sourced by scripts/install-ferretdb and scripts/go-tool.sh: sets $GO to a Go of 1.24 or
# newer — the machine's own, or a pinned toolchain fetched from the Go module proxy and checked
# against its SHA-256 — and $SUDO for writing under $PREFIX. Needs `say` and `PREFIX`.

GO_TOOLCHAIN=go1.24.13
GO_TOOLCHAIN_SHA256=d2b048367a3d1a748b87f756fa06df12ce3b419e1d5f2a3612acb8950d615f9f

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1; then SUDO="sudo"; else
    say "need root to install into $PREFIX (or set DBDUEL_TOOLS and DBDUEL_BIN_DIR)" >&2
    exit 3
  fi
fi

go_ok() { # go_ok GO: is it 1.24 or newer?
  local v
  v=$("$1" env GOVERSION 2>/dev/null) || return 1
  v=${v#go}
  local major=${v%%.*} rest=${v#*.}
  local minor=${rest%%.*}
  [ "$major" -gt 1 ] || { [ "$major" -eq 1 ] && [ "${minor%%[!0-9]*}" -ge 24 ]; }
}
GO=""
for g in "$(command -v go || true)" /usr/local/go/bin/go "$PREFIX/$GO_TOOLCHAIN/bin/go"; do
  if [ -n "$g" ] && [ -x "$g" ] && go_ok "$g"; then GO=$g; break; fi
done
if [ -z "$GO" ]; then
  for tool in curl unzip; do
    command -v "$tool" >/dev/null 2>&1 || {
      export DEBIAN_FRONTEND=noninteractive
      $SUDO apt-get update -qq
      $SUDO apt-get install -y -qq --no-install-recommends curl unzip ca-certificates
      break
    }
  done
  zip=$(mktemp --suffix=.zip)
  url="https://proxy.golang.org/golang.org/toolchain/@v/v0.0.1-$GO_TOOLCHAIN.linux-amd64.zip"
  say "fetching $GO_TOOLCHAIN from the Go module proxy"
  curl -fsSLo "$zip" "$url"
  echo "$GO_TOOLCHAIN_SHA256  $zip" | sha256sum -c --quiet
  unpack=$(mktemp -d)
  unzip -q "$zip" -d "$unpack"
  $SUDO mkdir -p "$PREFIX"
  $SUDO rm -rf "${PREFIX:?}/$GO_TOOLCHAIN"
  $SUDO mv "$unpack/golang.org/toolchain@v0.0.1-$GO_TOOLCHAIN.linux-amd64" "$PREFIX/$GO_TOOLCHAIN"
  rm -rf "$zip" "$unpack"
  GO=$PREFIX/$GO_TOOLCHAIN/bin/go
fi
