// SPDX-License-Identifier: MIT

// A client-go informer over the same objects the remediator watches (the nodes of a label
// selector and the budget Leases of a namespace), for tests/bench/bench_watch.py to measure the
// API server's cost of against ours: a SharedInformerFactory's reflectors (one paged LIST, then
// WATCHes with bookmarks, relist on 410), nothing else. It prints "synced N nodes, M leases"
// once both caches are filled, and the cache sizes again at SIGTERM.
//
//	informer -kubeconfig FILE [-selector SEL] [-namespace NS]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

func main() {
	kubeconfig := flag.String("kubeconfig", "", "kubeconfig file")
	selector := flag.String("selector", "", "label selector of the nodes")
	namespace := flag.String("namespace", "cpuzombie", "namespace of the budget Leases")
	flag.Parse()
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(2)
	}
	cfg.UserAgent = "client-go-informer"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "informer:", err)
		os.Exit(2)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	// no resync: the remediator re-decides from its cache, it never re-reads the API
	nodes := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = *selector }))
	leases := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithNamespace(*namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.LabelSelector = "app.kubernetes.io/managed-by=cpuzombie"
		}))
	ni := nodes.Core().V1().Nodes().Informer()
	li := leases.Coordination().V1().Leases().Informer()
	nodes.Start(ctx.Done())
	leases.Start(ctx.Done())
	t0 := time.Now()
	if !cache.WaitForCacheSync(ctx.Done(), ni.HasSynced, li.HasSynced) {
		fmt.Fprintln(os.Stderr, "informer: caches not synced")
		os.Exit(1)
	}
	fmt.Printf("synced %d nodes, %d leases in %.2f s\n", len(ni.GetStore().List()),
		len(li.GetStore().List()), time.Since(t0).Seconds())
	<-ctx.Done()
	fmt.Printf("stopped with %d nodes, %d leases\n", len(ni.GetStore().List()),
		len(li.GetStore().List()))
}
