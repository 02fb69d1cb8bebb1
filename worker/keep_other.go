//go:build !linux

package worker

import batchv1 "batchd/proto/batch/v1"

// collectKept keeps nothing where the worker cannot walk a directory
// without following links (openat with O_NOFOLLOW per component): every
// pattern is listed as not kept, with the reason.
func collectKept(_ string, patterns []string, _ keepRules) []*batchv1.KeptFileContent {
	var out []*batchv1.KeptFileContent
	for _, p := range patterns {
		out = append(out, &batchv1.KeptFileContent{File: &batchv1.KeptFile{Path: p, NotKept: "this worker's system cannot keep files safely (Linux only)"}})
	}
	return out
}

func lockScratch(string) error { return nil }
