#!/usr/bin/perl
# The man pages in docs/: groff renders each without a warning, and every
# indent opened with .RS is closed before the next item (.TP, .IP, .SH,
# .SS), so no item renders nested under the one before it.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;

plan(skip_all => 'no groff') unless has_cmd('groff');

my @pages = sort glob("$SKTest::ROOT/docs/*.[0-9]");
ok(@pages >= 5, 'man pages found') or diag("in $SKTest::ROOT/docs");

for my $page (@pages) {
    (my $name = $page) =~ s{.*/}{};
    my $r = run_cmd(['groff', '-man', '-Tutf8', '-ww', '-z', $page]);
    is($r->{rc}, 0, "$name: groff renders it");
    is($r->{err}, '', "$name: no groff warnings");

    my ($depth, $nofill, @bad) = (0, 0);
    open my $fh, '<', $page or die "$page: $!";
    while (my $line = <$fh>) {
        if ($line =~ /^\.RS\b/) {
            $depth++;
        } elsif ($line =~ /^\.RE\b/) {
            push @bad, "line $.: .RE without .RS" if --$depth < 0;
        } elsif ($line =~ /^\.(nf|fi)\b/) {
            $nofill = $1 eq 'nf';
        } elsif ($line =~ /^\.(TP|IP|SH|SS|PP|LP|P)\b/) {
            push @bad, "line $.: .$1 inside an open .RS" if $depth > 0;
            push @bad, "line $.: .$1 inside .nf" if $nofill;
        }
    }
    push @bad, "end: $depth .RS left open" if $depth > 0;
    push @bad, 'end: .nf left open' if $nofill;
    is_deeply(\@bad, [], "$name: indents and no-fill blocks closed");
}

done_testing();
