package httpapi

// DefaultMaxBodyBytes bounds every request body (DESIGN.md §8: wire bodies
// and task specs are at most 64 KiB). Bodies are read by httpkit.DecodeJSON.
const DefaultMaxBodyBytes = 64 << 10
