//go:build !unix

package subfetch

const noFollow = 0
