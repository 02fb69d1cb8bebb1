package web

import (
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
)

func get(t *testing.T, srv *httptest.Server, path string) (*http.Response, string) {
	t.Helper()
	res, err := srv.Client().Get(srv.URL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatal(err)
	}
	return res, string(b)
}

// TestHandler checks that the embedded page and the bundles it names are
// served, with caching that lets a new build show up at once.
func TestHandler(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close)

	res, html := get(t, srv, "/")
	if got, want := res.StatusCode, http.StatusOK; got != want {
		t.Fatalf("GET / status = %d, want %d", got, want)
	}
	if got, want := res.Header.Get("Cache-Control"), "no-cache"; got != want {
		t.Errorf("GET / Cache-Control = %q, want %q", got, want)
	}
	if !strings.Contains(html, `id="main"`) {
		t.Fatalf("GET / does not look like the built page:\n%s", html)
	}
	refs := regexp.MustCompile(`(?:src|href)="(app-[A-Za-z0-9]+\.(?:js|css))"`).FindAllStringSubmatch(html, -1)
	if got, want := len(refs), 2; got != want {
		t.Fatalf("index.html names %d bundles, want %d (one js, one css)", got, want)
	}
	for _, m := range refs {
		res, body := get(t, srv, "/"+m[1])
		if got, want := res.StatusCode, http.StatusOK; got != want {
			t.Fatalf("GET /%s status = %d, want %d", m[1], got, want)
		}
		if body == "" {
			t.Errorf("GET /%s is empty", m[1])
		}
		if got := res.Header.Get("Cache-Control"); !strings.Contains(got, "immutable") {
			t.Errorf("GET /%s Cache-Control = %q, want immutable", m[1], got)
		}
	}

	res, _ = get(t, srv, "/no-such-file.js")
	if got, want := res.StatusCode, http.StatusNotFound; got != want {
		t.Errorf("GET /no-such-file.js status = %d, want %d", got, want)
	}
}
