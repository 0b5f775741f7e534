package paddle

import "volcano.sh/volcano/pkg/controllers/job/plugins"

// Registering in init lets a main enable the plugin with a blank import, next
// to Volcano's own job plugins (svc, env, ssh, pytorch, ...). Recovering
// (recover.go) keeps a panic on one job from ending the controller manager.
func init() {
	plugins.RegisterPluginBuilder(PluginName, Recovering(New))
}
