package sandbox

// PortWallBuilds is how many port wall rulesets this process has built.
func PortWallBuilds() int64 { return wall.builds.Load() }
