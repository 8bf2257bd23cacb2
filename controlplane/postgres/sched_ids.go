package postgres
