//go:build !unix

package app

const noFollow = 0
