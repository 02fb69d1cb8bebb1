package store

import (
	"encoding/json"
	"reflect"
	"testing"

	"batchd/sched"
)

// specJSONCases are specs as the store writes them, and variations that
// must go to encoding/json.
var specJSONCases = []sched.TaskSpec{
	{Argv: []string{"true"}},
	{},
	{Argv: []string{}, Env: map[string]string{}},
	{Argv: []string{"sh", "-c", "echo $BATCH_TASK_INDEX"}, Env: map[string]string{"A": "1", "B": ""}, Dir: "/tmp/x",
		EstimateSeconds: 1.5, NoSpeculation: true, TimeoutSeconds: 3600, DeadlineSeconds: 1e-7},
	{Argv: []string{`echo "quoted" <html> & \back`, "tab\there", "é ü 世界"}, EstimateSeconds: 1e21, TimeoutSeconds: 123456789.125},
	{Argv: []string{"x"}, Env: map[string]string{"K\"": "v\n"}},
	{Argv: []string{"x"}, Cpus: 2, MemoryMB: 512, Keep: []string{"result.txt", "out/*.csv"}},
}

// decodeSpec gives what json.Unmarshal gives, by its fast path for what
// json.Marshal writes and by json.Unmarshal for the rest.
func TestDecodeSpec(t *testing.T) {
	fast := 0
	for _, spec := range specJSONCases {
		b, err := json.Marshal(spec)
		if err != nil {
			t.Fatal(err)
		}
		var want, got sched.TaskSpec
		if err := json.Unmarshal(b, &want); err != nil {
			t.Fatal(err)
		}
		if err := decodeSpec(string(b), &got); err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v (%v), want %#v", b, got, err, want)
		}
		if fastSpec(string(b), &got) {
			fast++
		}
	}
	if fast < 3 {
		t.Errorf("the fast path read %d of the plain specs", fast)
	}
	for _, s := range []string{`{"Argv":["a"]}`, `{"Argv":["a"],"Env":null,"Dir":"","EstimateSeconds":01,"NoSpeculation":false,"TimeoutSeconds":0,"DeadlineSeconds":0}`, `nope`} {
		var a, b sched.TaskSpec
		errA := decodeSpec(s, &a)
		errB := json.Unmarshal([]byte(s), &b)
		if (errA == nil) != (errB == nil) || !reflect.DeepEqual(a, b) {
			t.Errorf("%s: decodeSpec %#v %v, json %#v %v", s, a, errA, b, errB)
		}
	}
}

// Whatever the input, decodeSpec agrees with json.Unmarshal.
func FuzzDecodeSpec(f *testing.F) {
	for _, spec := range specJSONCases {
		b, _ := json.Marshal(spec)
		f.Add(string(b))
	}
	f.Fuzz(func(t *testing.T, s string) {
		var a, b sched.TaskSpec
		errA := decodeSpec(s, &a)
		errB := json.Unmarshal([]byte(s), &b)
		if (errA == nil) != (errB == nil) {
			t.Fatalf("%q: decodeSpec err %v, json err %v", s, errA, errB)
		}
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("%q: decodeSpec %#v, json %#v", s, a, b)
		}
	})
}
