//go:build !unix

package envcrypt

const noFollow = 0
