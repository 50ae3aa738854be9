# Sourced by scripts/install-go-tpc and scripts/install-go-ycsb: `go_tool NAME VERSION MODULE
# DIR` builds the command in DIR of the Go module MODULE, pinned at VERSION, from the Go module
# proxy (which serves single versions, not `@latest`), into $PREFIX/NAME-VERSION/NAME, linked
# from the bin directory, with the machine's Go of 1.24 or newer or a pinned toolchain fetched
# from the proxy (scripts/go-toolchain.sh). The module is built as the main module, from its
# own go.mod: its `replace` lines hold (go-ycsb pins an old thrift that way; as a dependency of
# another module it would not build). Built once and reused: a second run finds the binary
# and does nothing.

PREFIX=${DBDUEL_TOOLS:-/usr/local/lib/dbduel}

say() { echo "install-$TOOL: $*"; }

go_tool() {
  local name=$1 version=$2 module=$3 dir=$4
  local dest=$PREFIX/$name-$version
  local link=${DBDUEL_BIN_DIR:-/usr/local/bin}/$name
  if [ -x "$dest/$name" ] && "$dest/$name" --help >/dev/null 2>&1; then
    [ -e "$link" ] || ln -sf "$dest/$name" "$link"
    say "$name $version is installed"
    return 0
  fi
  # A Go of 1.24 or newer, and $SUDO.
  source "$(dirname "${BASH_SOURCE[0]}")/go-toolchain.sh"
  say "building $name $version with $("$GO" env GOVERSION)"
  local work
  work=$(mktemp -d)
  # shellcheck disable=SC2064 # the directory is this call's own
  trap "chmod -R u+w '$work' 2>/dev/null; rm -rf '$work'" EXIT
  (
    export GOTOOLCHAIN=local GOPATH=$work/gopath GOMODCACHE=$work/mod GOCACHE=$work/cache
    export CGO_ENABLED=0 GOTELEMETRY=off
    local src
    src=$("$GO" mod download -json "$module@$version" |
      sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -n "$src" ] || { say "the Go module proxy gave no $module@$version" >&2; exit 1; }
    cp -r "$src" "$work/src" && chmod -R u+w "$work/src" && cd "$work/src"
    GOFLAGS=-mod=mod "$GO" build -trimpath -o "$name" "$dir"
    "./$name" --help >/dev/null
  )
  $SUDO mkdir -p "$dest"
  $SUDO install -m 0755 "$work/src/$name" "$dest/$name"
  $SUDO ln -sf "$dest/$name" "$link"
  say "installed $dest/$name"
}
