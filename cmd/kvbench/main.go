package main

import "github.com/kvnode/kvnode/bench/kvbench/command"

func main() { command.Main(command.Targets()) }
