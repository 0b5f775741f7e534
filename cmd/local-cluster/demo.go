package main

import "fmt"

func runDemo(args []string) error { return fmt.Errorf("not yet") }
