package main

import (
	_ "github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib"
	_ "github.com/pgvector/pgvector-go"
	_ "github.com/pgvector/pgvector-go/pgx"
	_ "github.com/santhosh-tekuri/jsonschema/v5"
	_ "github.com/pressly/goose/v3"
	_ "github.com/pressly/goose/v3/lock"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/google/uuid"
	_ "go.yaml.in/yaml/v3"
	_ "github.com/stretchr/testify/require"
)

func main() {}
