//go:build !linux || !cgo

package store

// arenaCap is the malloc arena cap in force: none outside Linux's glibc.
var arenaCap = 0
