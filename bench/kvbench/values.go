package kvbench

import (
	"encoding/json"
	"strconv"
)

// Customers is the number of distinct customerId values the written
// orders carry (key i has customer i mod Customers): what the default
// query selects on.
const Customers = 100

// padText fills a value's description up to the asked size.
const padText = "abcdefghijklmnopqrstuvwxyz0123456789"

// value is the order-shaped JSON object kvbench writes for key index i at
// revision rev (CAS increments it), padded through its description to
// size bytes when size is larger than the object without padding:
//
//	{"@type":"Order","purchaseOrderNo":i,"customerId":i%100,"rev":rev,
//	 "orderDate":"01/15/2024","totalPrice":42.5,"description":"abc..."}
func value(i int, rev int64, size int) []byte {
	b := make([]byte, 0, max(size, 160))
	b = append(b, `{"@type":"Order","purchaseOrderNo":`...)
	b = strconv.AppendInt(b, int64(i), 10)
	b = append(b, `,"customerId":`...)
	b = strconv.AppendInt(b, int64(i%Customers), 10)
	b = append(b, `,"rev":`...)
	b = strconv.AppendInt(b, rev, 10)
	b = append(b, `,"orderDate":"01/15/2024","totalPrice":`...)
	b = strconv.AppendInt(b, int64(10+i%990), 10)
	b = append(b, `.5,"description":"`...)
	for pad := size - len(b) - len(`"}`); pad > 0; {
		n := min(pad, len(padText))
		b = append(b, padText[:n]...)
		pad -= n
	}
	return append(b, `"}`...)
}

// revision reads the rev member of a value kvbench wrote (0 when the
// value has none, as one written by somebody else).
func revision(v []byte) (int64, error) {
	var o struct {
		Rev int64 `json:"rev"`
	}
	if err := json.Unmarshal(v, &o); err != nil {
		return 0, err
	}
	return o.Rev, nil
}
