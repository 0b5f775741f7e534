package paddle

import "volcano.sh/volcano/pkg/controllers/job/plugins"

// Register adds the plugin to Volcano's job plugin factory, next to
// Volcano's own job plugins (svc, env, ssh, pytorch, ...). A main calls it
// before Volcano's job controller starts; Recovering (recover.go) keeps a
// panic on one job from ending the controller manager.
func Register() {
	plugins.RegisterPluginBuilder(pluginName, Recovering(New))
}
