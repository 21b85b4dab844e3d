# free_port (sourced by the e2e scripts): a free loopback port, never one this script was given
# before. The kernel can hand the same free port to two calls in a row (each binds, reads the
# port and closes), and a server given it for --port and --metrics-port refuses to start. The
# ports given are kept in a file, since each $(free_port) runs in a subshell.
qmlx_given_ports=$(mktemp "${TMPDIR:-/tmp}/qmlx-ports.XXXXXX")
free_port() {
  local port
  while :; do
    port=$(/usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    grep -qx "$port" "$qmlx_given_ports" || break
  done
  echo "$port" >>"$qmlx_given_ports"
  echo "$port"
}
