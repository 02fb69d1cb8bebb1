package worker

import (
	"bufio"
	"os"
	"strconv"
	"strings"
)

// machineMemoryMB is the machine's memory in MiB (MemTotal in
// /proc/meminfo), 0 when unknown.
func machineMemoryMB() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseInt(fields[1], 10, 64)
			if err != nil {
				return 0
			}
			return kb / 1024
		}
	}
	return 0
}
