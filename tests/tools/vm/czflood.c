// SPDX-License-Identifier: GPL-2.0
/*
 * czflood - the kernel-log flood of tests/bench/soak_vm.py, inside the VM of
 * tests/tools/vm/census-v2-vm.sh (never on the host): a kthread printk()s @rate lines a
 * second for @seconds (three real-format texts in turn: martian source, conntrack table
 * full, SYN flooding) and, at @ena_every / 2 s and every @ena_every s after, one ENA reset
 * as the driver logs it (lost Tx completions, trigger, completed). printk() from a module is
 * facility 0, the kernel's: what the agent takes as evidence (a line written to /dev/kmsg
 * from user space is facility 1 and never counts). Reset k names "(129+k > 128)", so the
 * test can tell which were found. noise_done, ena_done and finished are read back from
 * /sys/module/czflood/parameters. Built against the VM kernel's headers by soak_vm.py.
 */
#include <linux/module.h>
#include <linux/kthread.h>
#include <linux/delay.h>
#include <linux/ktime.h>

static unsigned int rate = 1000;
module_param(rate, uint, 0444);
static unsigned int seconds = 300;
module_param(seconds, uint, 0444);
static unsigned int ena_every = 20;
module_param(ena_every, uint, 0444);
static unsigned long noise_done;
module_param(noise_done, ulong, 0444);
static unsigned int ena_done;
module_param(ena_done, uint, 0444);
static unsigned int finished;
module_param(finished, uint, 0444);

static struct task_struct *task;

static int flood(void *unused)
{
	ktime_t t0 = ktime_get();
	u64 next_ena = (u64)ena_every * 1000 / 2;
	while (!kthread_should_stop()) {
		u64 ms = ktime_ms_delta(ktime_get(), t0);
		u64 want = ms * rate / 1000;
		if (ms >= (u64)seconds * 1000)
			break;
		while (noise_done < want) {
			switch (noise_done % 3) {
			case 0:
				pr_warn("IPv4: martian source 10.0.%lu.%lu from 10.1.2.3, on dev eth0\n",
					(noise_done >> 8) & 255, noise_done & 255);
				break;
			case 1:
				pr_warn("nf_conntrack: nf_conntrack: table full, dropping packet\n");
				break;
			default:
				pr_info("TCP: request_sock_TCP: Possible SYN flooding on port 8080. Sending cookies.  Check SNMP counters.\n");
			}
			noise_done++;
		}
		if (ena_every && ms >= next_ena) {
			printk(KERN_ERR "ena 0000:00:05.0 eth0: The number of lost tx completions is above the threshold (%u > 128). Reset the device\n",
			       129 + ena_done);
			printk(KERN_ERR "ena 0000:00:05.0 eth0: Trigger reset is on\n");
			printk(KERN_INFO "ena 0000:00:05.0: Device reset completed successfully, Driver info: Elastic Network Adapter (ENA) v2.11.0g\n");
			ena_done++;
			next_ena += (u64)ena_every * 1000;
		}
		usleep_range(5000, 6000);
	}
	finished = 1;
	pr_info("czflood: done noise=%lu ena=%u\n", noise_done, ena_done);
	while (!kthread_should_stop())
		msleep(100);
	return 0;
}

static int __init czflood_init(void)
{
	task = kthread_run(flood, NULL, "czflood");
	return IS_ERR(task) ? PTR_ERR(task) : 0;
}

static void __exit czflood_exit(void)
{
	kthread_stop(task);
}

module_init(czflood_init);
module_exit(czflood_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("cpuzombie test: kernel log flood with ENA reset lines");
