package bucket

import "fmt"

// Price is a price table for reading from object storage: what a GET and a
// gigabyte out cost, and where and when the figures were taken. A result
// file records it (Settings), so an epoch's cost can be recomputed at
// other prices.
type Price struct {
	GetPer1000  float64 // USD per 1,000 GET requests
	EgressPerGB float64 // USD per 10⁹ bytes out
	Source      string  // the price list and its date
}

// S3Standard is AWS S3 Standard in us-east-1 as its pricing page listed
// it in January 2025: GET $0.0004 per 1,000 requests, data transfer out
// to the internet $0.09 per GB (the first 10 TB a month). Reading from a
// bucket in the same region as the GPUs has no egress charge; the figure
// is the cost of the other case, which the cross-region and home links
// emulate.
var S3Standard = Price{GetPer1000: 0.0004, EgressPerGB: 0.09, Source: "AWS S3 Standard us-east-1, internet egress, list prices of 2025-01"}

// Epoch is what reading n samples costs at requestsPerSample GETs and
// bytesPerSample bytes each, in USD.
func (p Price) Epoch(requestsPerSample, bytesPerSample float64, n int) float64 {
	return float64(n) * (requestsPerSample*p.GetPer1000/1000 + bytesPerSample*p.EgressPerGB/1e9)
}

// Settings are the table as a result file's configuration lines.
func (p Price) Settings() [][2]string {
	return [][2]string{
		{"price-get-usd-per-1000", fmt.Sprint(p.GetPer1000)},
		{"price-egress-usd-per-gb", fmt.Sprint(p.EgressPerGB)},
		{"price-source", p.Source},
	}
}
