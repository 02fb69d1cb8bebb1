// The bill: ledger lines summed by user, set and period.

package client

import (
	"context"
	"time"

	batchv1 "batchd/proto/batch/v1"
	"batchd/sched"
)

// BillInput selects bill lines. Zero times mean unbounded.
type BillInput struct {
	Since, Until time.Time
	Set          sched.SetID
	// Lines asks for the lines as well as the totals.
	Lines bool
	// Owner is whose bill (admins only; "" the caller's, "*" everyone's).
	Owner string
}

// Bill is a range of the ledger and its totals.
type Bill struct {
	Lines  []sched.BillLine
	Totals sched.BillTotals
	// BySet and ByOwner sum the lines per task set and per owner.
	BySet, ByOwner []BillGroup
	// PriceSlotSecond and PriceCPUSecond are the server's prices now.
	PriceSlotSecond, PriceCPUSecond float64
}

// BillGroup sums the bill lines of one owner (Set 0) or one task set.
type BillGroup struct {
	Owner       string
	Set         sched.SetID
	SetName     string
	Lines       int64
	SlotSeconds float64
	CPUSeconds  float64
	Amount      float64
}

// GetBill returns the caller's bill in [Since, Until), reading every page of
// lines when in.Lines is set.
func (c *Client) GetBill(ctx context.Context, in BillInput) (Bill, error) {
	var bill Bill
	token := ""
	for {
		req := &batchv1.GetBillRequest{
			Since:        timeToPB(in.Since),
			Until:        timeToPB(in.Until),
			SetId:        int64(in.Set),
			IncludeLines: in.Lines,
			PageToken:    token,
			Owner:        in.Owner,
		}
		res, err := retry(ctx, c, func(ctx context.Context) (*batchv1.GetBillResponse, error) {
			return c.billing().GetBill(ctx, req)
		})
		if err != nil {
			return Bill{}, err
		}
		bill.Totals = billTotalsFromPB(res.GetTotals())
		bill.PriceSlotSecond, bill.PriceCPUSecond = res.GetPriceSlotSecond(), res.GetPriceCpuSecond()
		bill.BySet, bill.ByOwner = nil, nil
		for _, g := range res.GetBySet() {
			bill.BySet = append(bill.BySet, billGroupFromPB(g))
		}
		for _, g := range res.GetByOwner() {
			bill.ByOwner = append(bill.ByOwner, billGroupFromPB(g))
		}
		for _, l := range res.GetLines() {
			bill.Lines = append(bill.Lines, billLineFromPB(l))
		}
		token = res.GetNextPageToken()
		if !in.Lines || token == "" {
			return bill, nil
		}
	}
}
