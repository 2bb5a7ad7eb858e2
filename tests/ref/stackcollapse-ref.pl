#!/usr/bin/perl
#
# stackcollapse-ref.pl — flamefs's reference for the perf-script importer.
#
# An independent, deliberately plain Perl rendering of the rules that
# collector/import/perf.c implements (those of FlameGraph's stackcollapse-perf.pl
# with default options, plus the differences listed in collector/README.md,
# and one more: an ELF symbol's version is dropped, "cfree@GLIBC_2.2.5" is
# "cfree", as flamefs names a function alike whatever the source).
# It shares no code with the C importer; the golden tests compare the two.
#
# Usage: stackcollapse-ref.pl [--binary NAME] [--event EV] [FILE...]
# Prints "process;frame;...;leaf WEIGHT" lines sorted bytewise, with equal
# stacks merged.  --event keeps only that event (or, when EV has no ":",
# also EV:modifiers); without it only the first event seen is kept, in
# every spelling (EV and EV:modifiers).
use strict;
use warnings;
use Getopt::Long;

my ($binary, $want_event);
GetOptions('binary=s' => \$binary, 'event=s' => \$want_event)
	or die "usage: $0 [--binary NAME] [--event EV] [FILE...]\n";

my %total;        # folded stack -> summed weight
my $first_event;  # the event kept when --event is not given
my ($in_sample, $keep, $pname, $weight, @frames);

sub event_kept {
	my ($ev) = @_;
	if (defined $want_event) {
		return 1 if $ev eq $want_event;
		return $want_event !~ /:/ && $ev =~ /^\Q$want_event\E:/;
	}
	# the first event in any spelling: cpu-clock, cpu-clock:u and
	# cpu-clock:ppp are one event (perf's modifiers are dropped)
	(my $base = $ev) =~ s/(.):[ukhHGIpPSDWeb]+$/$1/;
	$first_event = $base unless defined $first_event;
	return $base eq $first_event;
}

sub finish {
	if ($in_sample && $keep) {
		my $name = defined $binary ? $binary : $pname;
		$total{join(';', $name, @frames)} += $weight;
	}
	$in_sample = 0;
	@frames = ();
}

sub tidy {
	my ($f, $is_java) = @_;
	$f =~ s/;/:/g;
	unless ($f =~ /\.\(.*\)\./) {            # not a Go method
		$f =~ s/\((?!anonymous namespace\)).*$//;
	}
	$f =~ s/["']//g;
	$f =~ s/^L// if $is_java && $f =~ m{/};
	return $f;
}

while (my $line = <>) {
	chomp $line;
	next if $line =~ /^#/;
	if ($line eq '') {
		finish();
		next;
	}
	if ($line =~ /^(\S.+?)\s+(\d+)\/*(\d+)*\s+/) {
		my $comm = $1;
		finish();
		$in_sample = 1;
		$keep = 1;
		$weight = 1;
		if ($line =~ /:\s*(\d+)*\s+(\S+):\s*$/) {
			my ($period, $ev) = ($1, $2);
			$keep = event_kept($ev);
			$weight = $period if defined $period && $period > 0;
		}
		($pname = $comm) =~ s/ /_/g;
		next;
	}
	next if $line =~ /^\s*$/;
	# Without callchains (perf record without -g): one line per sample,
	# comm right-aligned, then time, period, event, pc, symbol, module.
	if (!$in_sample &&
	    $line =~ /^\s+(\S.+?)\s+\d+(?:\/\d+)?\s+.*?:\s*(\d+)?\s+(\S+):\s+([0-9a-f]+\s+.+ \(.*\).*)$/) {
		my ($comm, $period, $ev, $rest) = ($1, $2, $3, $4);
		finish();
		$in_sample = 1;
		$keep = event_kept($ev);
		$weight = defined $period && $period > 0 ? $period : 1;
		($pname = $comm) =~ s/ /_/g;
		$line = $rest;
		stack_line($line) if $keep;
		finish();
		next;
	}
	die "line $.: stack line outside a sample\n" unless $in_sample;
	next unless $keep;
	stack_line($line);
}
finish();

sub stack_line {
	my ($line) = @_;
	$line =~ /^\s*(\w+)\s*(.+) \((.*)\)/
		or die "line $.: not a stack line: $line\n";
	my ($func, $mod) = ($2, $3);
	$func =~ s/\+0x[0-9a-f]+$//;
	return if substr($func, 0, 1) eq '(';
	my @pieces = split /->/, $func;
	my @group;
	for my $i (0 .. $#pieces) {
		my $p = $pieces[$i];
		if ($p eq '[unknown]' && $mod ne '[unknown]') {
			(my $base = $mod) =~ s{^.*/}{};
			$p = "[$base]";
		} elsif ($mod !~ m{^/tmp/perf-} && $p =~ /^([^@]+)(@@?)([A-Za-z0-9_.]+)$/ &&
			!($2 eq '@' && $3 eq 'plt')) {
			$p = $1; # flamefs drops ELF symbol versions (cfree@GLIBC_2.2.5); @plt stays
		}
		$p = tidy($p, $pname =~ /^java/);
		$p .= '_[i]' if $i > 0 && index($p, '_[i]') < 0;
		push @group, $p;
	}
	unshift @frames, @group;
}

for my $k (sort keys %total) {
	print "$k $total{$k}\n";
}
