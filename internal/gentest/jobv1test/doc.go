// Package jobv1test tests gen/jobv1 from outside it: Validate and
// ValidateValue against the schema and their field errors, the fast path
// against jsonschema/v6 (FuzzFastPath), Decode against DecodeValue
// (FuzzDecodeValue), EncodeValue against encoding/json (FuzzEncodeValue).
// It has no code of its own; run its fuzz targets through make fuzz.
package jobv1test
