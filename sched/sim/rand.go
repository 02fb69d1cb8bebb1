package sim

import "math"

// rng is a small, fast, seedable generator (SplitMix64). One rng is one
// stream; streams are derived from a seed and a key with newRNG so that
// draws for one user, job or copy do not depend on the order in which the
// simulation happens to ask for others.
type rng struct{ s uint64 }

// mix64 is SplitMix64's finaliser, a good 64-bit hash.
func mix64(z uint64) uint64 {
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// newRNG returns the stream for seed and the keys.
func newRNG(seed int64, keys ...uint64) rng {
	h := mix64(uint64(seed) + 0x9e3779b97f4a7c15)
	for _, k := range keys {
		h = mix64(h ^ (k + 0x9e3779b97f4a7c15))
	}
	return rng{s: h}
}

func (r *rng) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	return mix64(r.s)
}

// float returns a uniform number in (0, 1): never 0, so logs are finite.
func (r *rng) float() float64 {
	return (float64(r.next()>>11) + 0.5) / (1 << 53)
}

// exp draws from the exponential distribution with the given mean.
func (r *rng) exp(mean float64) float64 { return -mean * math.Log(r.float()) }

// uniform draws uniformly from [lo, hi).
func (r *rng) uniform(lo, hi float64) float64 { return lo + (hi-lo)*r.float() }

// intn draws uniformly from the integers lo..hi inclusive.
func (r *rng) intn(lo, hi int) int {
	if hi <= lo {
		return lo
	}
	return lo + int(r.next()%uint64(hi-lo+1))
}

// pareto draws from the Pareto distribution with scale xm and shape beta.
func (r *rng) pareto(xm, beta float64) float64 {
	return xm * math.Pow(r.float(), -1/beta)
}

// boundedPareto draws from the Pareto distribution with shape alpha
// truncated to [lo, hi] (inverse transform).
func (r *rng) boundedPareto(lo, hi, alpha float64) float64 {
	u := r.float()
	la, ha := math.Pow(lo, alpha), math.Pow(hi, alpha)
	return math.Pow(-(u*ha-u*la-ha)/(ha*la), -1/alpha)
}

// normal draws a standard normal variate (Box–Muller, one of the pair).
func (r *rng) normal() float64 {
	u1 := r.float()
	for u1 <= 0 {
		u1 = r.float()
	}
	return math.Sqrt(-2*math.Log(u1)) * math.Cos(2*math.Pi*r.float())
}
