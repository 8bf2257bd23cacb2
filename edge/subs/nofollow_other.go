//go:build !unix

package subs

const noFollow = 0
