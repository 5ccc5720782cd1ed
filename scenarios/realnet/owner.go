package realnet

import (
	"bufio"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
)

// socketOwner names the process that opened a loopback connection, from
// its remote address as the proxy sees it: the socket whose local port is
// that port is found in /proc/net/tcp, and its inode among the open files
// of the candidate processes. Raft passes its configuration, addresses
// included, in snapshots, so a member may dial through another member's
// proxy; this keeps a partition a property of who talks, not of which
// address they used.
func socketOwner(remote net.Addr, pids map[int]string) (string, bool) {
	tcp, ok := remote.(*net.TCPAddr)
	if !ok || len(pids) == 0 {
		return "", false
	}
	inode, err := socketInode(tcp.Port)
	if err != nil || inode == "" {
		return "", false
	}
	want := "socket:[" + inode + "]"
	for pid, member := range pids {
		dir := fmt.Sprintf("/proc/%d/fd", pid)
		entries, err := os.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, e := range entries {
			if link, err := os.Readlink(dir + "/" + e.Name()); err == nil && link == want {
				return member, true
			}
		}
	}
	return "", false
}

// socketInode finds the inode of the IPv4 TCP socket bound to local port.
func socketInode(port int) (string, error) {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return "", err
	}
	defer f.Close()
	suffix := fmt.Sprintf(":%04X", port)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		if len(fields) < 10 || !strings.HasSuffix(fields[1], suffix) {
			continue
		}
		if _, err := strconv.ParseUint(fields[9], 10, 64); err == nil && fields[9] != "0" {
			return fields[9], nil
		}
	}
	return "", sc.Err()
}
