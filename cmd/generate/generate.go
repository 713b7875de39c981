package main

// go generate ./... from the repository root runs the generator through the
// directive below, from this directory, so the paths of the schema and of the
// output are given from here: it writes gen/, docs/codes.md and
// gen/vectors/vectors.json. The directive sits in the generator's package,
// not in gen/, because gen/ holds only what the generator writes.

//go:generate go run . -schema ../../schema -out ../..
