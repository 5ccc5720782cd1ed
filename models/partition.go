package models

import "github.com/anishathalye/porcupine"

// partitionBy splits history by key: each part keeps history's order, and
// the parts come in the order their keys first appear.
func partitionBy(history []porcupine.Operation, key func(porcupine.Operation) string) [][]porcupine.Operation {
	index := make(map[string]int)
	var parts [][]porcupine.Operation
	for _, op := range history {
		k := key(op)
		i, ok := index[k]
		if !ok {
			i = len(parts)
			index[k] = i
			parts = append(parts, nil)
		}
		parts[i] = append(parts[i], op)
	}
	return parts
}
