// Package promtext reads a batchd server's /metrics for tests and
// benchmarks: every series and its value, as the Prometheus text format
// writes them.
package promtext

import (
	"bufio"
	"fmt"
	"net/http"
	"strconv"
	"strings"
)

// Read returns every series on url's /metrics by its name as written,
// labels included (`batchd_watches_total{tasks="summary"}`), and its
// value. (The server writes no timestamps after the values.)
func Read(url string) (map[string]float64, error) {
	res, err := http.Get(url + "/metrics")
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/metrics: %s", url, res.Status)
	}
	out := map[string]float64{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return nil, fmt.Errorf("%s/metrics: %q: %w", url, line, err)
		}
		out[line[:i]] = v
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
