/*
 * Work.java - the Java program of test-jit.sh: for MS milliseconds
 * (default 3000) it calls hot() three times for each call of side(), the
 * same loop in both, so hot holds about 3/4 of its CPU time and side 1/4,
 * both compiled by the JIT.  usage: java Work [MS [PAUSE_MS]]: with
 * PAUSE_MS it also sleeps that long once the loop ends (time for a test
 * to look at a recording while the JVM still runs).  It prints its pid
 * first ("pid N"), so that the test can remove its perf map.  Each call's
 * length varies by up to half either way (a seeded generator, the same
 * every run): a loop of fixed period can lock into phase with a sampling
 * timer and give one method more than its share (tests/jitter.h).
 * With -Dwork.cpu=true, MS counts the main thread's CPU time instead of
 * wall time: a sampler at a fixed rate then takes the same number of
 * samples of the loop however busy the machine is.
 */
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.util.SplittableRandom;

public class Work {
	static double hot(int n)
	{
		double s = 0;
		for (int i = 1; i <= n; i++)
			s += Math.sqrt(i) * 1.0000001;
		return s;
	}

	static double side(int n)
	{
		double s = 0;
		for (int i = 1; i <= n; i++)
			s += Math.sqrt(i) * 0.9999999;
		return s;
	}

	public static void main(String[] args) throws InterruptedException
	{
		long ms = args.length > 0 ? Long.parseLong(args[0]) : 3000;
		long pause = args.length > 1 ? Long.parseLong(args[1]) : 0;
		System.out.println("pid " + ProcessHandle.current().pid());
		System.out.flush();
		boolean cpu = Boolean.getBoolean("work.cpu");
		ThreadMXBean mx = ManagementFactory.getThreadMXBean();
		long end = (cpu ? mx.getCurrentThreadCpuTime() : System.nanoTime()) + ms * 1000000L;
		double t = 0;
		SplittableRandom rnd = new SplittableRandom(25);
		while ((cpu ? mx.getCurrentThreadCpuTime() : System.nanoTime()) < end) {
			t += hot(150000 + rnd.nextInt(300000));
			t += hot(150000 + rnd.nextInt(300000));
			t += hot(150000 + rnd.nextInt(300000));
			t += side(150000 + rnd.nextInt(300000));
		}
		System.out.println(t > 0 ? "done" : "?");
		if (pause > 0)
			Thread.sleep(pause);
	}
}
