package main

import (
	"fmt"

	"sigs.k8s.io/yaml"
)

// withoutPlugin returns the scheduler configuration conf with every plugin
// entry named name removed from its tiers (a tier left empty is dropped);
// everything else (actions, the other plugins and their arguments, action
// configurations) is kept as it is. It fails when no entry is named name,
// so a renamed plugin cannot make the two runs silently identical.
func withoutPlugin(conf []byte, name string) ([]byte, error) {
	var doc map[string]interface{}
	if err := yaml.Unmarshal(conf, &doc); err != nil {
		return nil, fmt.Errorf("scheduler configuration: %w", err)
	}
	tiers, ok := doc["tiers"].([]interface{})
	if !ok {
		return nil, fmt.Errorf("scheduler configuration has no tiers list")
	}
	removed := 0
	var kept []interface{}
	for i, t := range tiers {
		tier, ok := t.(map[string]interface{})
		if !ok {
			return nil, fmt.Errorf("tiers[%d] is not a mapping", i)
		}
		plugins, _ := tier["plugins"].([]interface{})
		var rest []interface{}
		for _, p := range plugins {
			if m, ok := p.(map[string]interface{}); ok && m["name"] == name {
				removed++
				continue
			}
			rest = append(rest, p)
		}
		if len(rest) == 0 {
			continue
		}
		tier["plugins"] = rest
		kept = append(kept, tier)
	}
	if removed == 0 {
		return nil, fmt.Errorf("no plugin %q in any tier of the scheduler configuration", name)
	}
	doc["tiers"] = kept
	return yaml.Marshal(doc)
}
