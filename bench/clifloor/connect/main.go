// Command connect is a Go program that links what every Connect client of
// batchd links (net/http, connect-go, the protobuf runtime, the generated
// batch/v1 package) and does nothing else: a floor for bench/clistart.sh
// (see package clifloor).
package main

import (
	"context"
	"net/http"
	"os"

	"connectrpc.com/connect"
	"google.golang.org/protobuf/proto"

	batchv1 "batchd/proto/batch/v1"
	"batchd/proto/batch/v1/batchv1connect"
)

func main() {
	if len(os.Args) > 1 { // never in the benchmark: keeps the client linked
		c := batchv1connect.NewTaskSetServiceClient(http.DefaultClient, os.Args[1])
		_, _ = c.GetTaskSet(context.Background(), &batchv1.GetTaskSetRequest{SetId: 1})
		_ = connect.NewError(connect.CodeUnknown, nil)
		_, _ = proto.Marshal(&batchv1.GetTaskSetRequest{})
	}
	os.Stdout.WriteString("connect\n")
}
