// Package clifloor holds two programs that bench/clistart.sh starts beside
// batchctl: what any Go program that links batchctl's stack pays before
// its main runs. Each does nothing but print a line; their imports alone
// decide what the runtime loads and which package initialisers run.
//
//   - nethttp: a Go program with an HTTP client (net/http, and with it
//     crypto/tls, which net/http always links);
//   - connect: that, plus connect-go, the protobuf runtime and batchd's
//     generated API package (batch/v1), as every Connect client of batchd
//     links them.
//
// batchctl --version can start no faster than the second.
package clifloor
