# Two emulated hosts on one machine for the benchmarks: network namespaces joined by a veth pair
# capped with `tc tbf` in each direction (the processes of one namespace count as another host:
# shm::HostId includes the network namespace). Sourced by tests/bench/*.sh; needs root.
#
#   netns_tools            ip and tc, or iproute2 unpacked from .devdeps (the GPU machine has
#                          none: fetch-deps.sh with EXTRA_DEBS="iproute2 libbpf1 libelf1 libmnl0
#                          libbsd0 libcap2 libxtables12 libmd0"); false when there are none
#   netns_up A B IFA IFB ADDRA ADDRB GBIT
#                          namespaces A and B, ADDRA/24 on IFA in A and ADDRB/24 on IFB in B,
#                          each direction capped at GBIT Gbit/s; false (and a message) on failure
#   netns_down A B         deletes them (kill their processes first)
#   NETNS_TC               the tc binary to run inside `ip netns exec` (a path: functions do not
#                          cross it), NETNS_LIBS its library path ("" for the machine's own)

netns_tools() {
  NETNS_TC=tc NETNS_LIBS=""
  local deps=/opt/deps
  if ! command -v ip >/dev/null && compgen -G ".devdeps/iproute2_*.deb" >/dev/null; then
    local f
    for f in .devdeps/{iproute2,libbpf1,libelf1,libmnl0,libbsd0,libcap2,libxtables12,libmd0}_*.deb; do
      [[ -e $f ]] && dpkg -x "$f" "$deps"
    done
  fi
  if ! command -v ip >/dev/null && [[ -x $deps/bin/ip || -x $deps/sbin/ip ]]; then
    NETNS_LIBS=$deps/lib/x86_64-linux-gnu:$deps/usr/lib/x86_64-linux-gnu
    # Debian 12's package has bin/ip; its sbin/ip is an absolute link to /bin/ip (not there).
    NETNS_IP=$deps/bin/ip
    [[ -x $NETNS_IP ]] || NETNS_IP=$deps/sbin/ip
    ip() { LD_LIBRARY_PATH=$NETNS_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$NETNS_IP" "$@"; }
    tc() { LD_LIBRARY_PATH=$NETNS_LIBS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$deps/sbin/tc" "$@"; }
    NETNS_TC=$deps/sbin/tc
  fi
  command -v ip >/dev/null && command -v tc >/dev/null
}

netns_up() {
  local a=$1 b=$2 ifa=$3 ifb=$4 addra=$5 addrb=$6 gbit=$7 side ns dev addr
  ip netns add "$a" && ip netns add "$b" || { echo "ip netns add failed (root?)" >&2; return 1; }
  ip link add "$ifa" netns "$a" type veth peer name "$ifb" netns "$b" ||
    { echo "cannot create the veth pair" >&2; return 1; }
  for side in "$a $ifa $addra" "$b $ifb $addrb"; do
    read -r ns dev addr <<<"$side"
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$addr/24" dev "$dev"
    ip -n "$ns" link set "$dev" up
    # The burst must cover a timer tick at this rate (25 Gbit/s x 1 ms ~ 3 MB).
    ip netns exec "$ns" env LD_LIBRARY_PATH="$NETNS_LIBS" "$NETNS_TC" qdisc add dev "$dev" root \
      tbf rate "${gbit}gbit" burst 4mb latency 20ms ||
      { echo "tc tbf on $dev failed (no sch_tbf in this kernel?)" >&2; return 1; }
  done
}

netns_down() {
  ip netns del "$1" 2>/dev/null
  ip netns del "$2" 2>/dev/null
  return 0
}
