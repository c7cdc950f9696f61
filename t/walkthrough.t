#!/usr/bin/perl
# The README's main job (`make demo`, scripts/walkthrough.sh) runs to the
# end: every step, on loopback, with the real daemons; and it leaves
# nothing running or on disk.
use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;

my $build = $ENV{BUILD} // 'build';
plan skip_all => 'sk-timeline or sk-mirror not built'
    unless -x "$SKTest::ROOT/$build/sk-timeline" && -x "$SKTest::ROOT/$build/sk-mirror";
plan skip_all => 'nginx module not built'
    unless -e "$SKTest::ROOT/$build/ngx/ngx_http_sk_module.so";

my @before = glob('/tmp/sk-walkthrough.*');
my $r = run_cmd(['sh', "$SKTest::ROOT/scripts/walkthrough.sh"]);
is($r->{rc}, 0, 'the walkthrough succeeds') or diag($r->{out} . $r->{err});
like($r->{out}, qr/^accept: https:\/\/www\.example\.test:\d+: carrier/m,
    'sk verify accepts the site nginx serves');
like($r->{out}, qr/^reject: https:\/\/www\.example\.test:\d+: .*no carrier/m,
    'and rejects the impostor, saying why');
like($r->{out}, qr/^sk: staple: fresh: answer of http:\/\/127\.0\.0\.1:\d+, oldest checkpoint \d+ s old\naccept: https:\/\/www\.example\.test:\d+: carrier.*\n  record of www\.example\.test: 3 entries, staple /m,
    'with no mirror reachable, a first contact decides from the staple');
like($r->{out}, qr/^   the liar's answer for www\.example\.test: 0 entries; the mirror's: 3\n.*\nsk: mirror http:\/\/127\.0\.0\.1:\d+: dropped: answer: timeline 7: map proof: the name is in the map of .*\nsk: mirror http:\/\/127\.0\.0\.1:\d+: fresh: .*\nreject: https:\/\/www\.example\.test:\d+: .*no carrier/m,
    'a lying mirror that hides the SK is refused by the map proofs, the next one decides');
SKIP: {
    skip 'no tor or tor-gencert', 2 if $r->{out} =~ /^== 19\..*skipped/m;
    like($r->{out}, qr/^sk: route 1(?: of 2)?: .*\n(?:sk: .*\n)*?sk:   reject: .*no carrier.*\n(?:sk: .*\n)*?sk: route 2 of 2: [a-z2-7]{56}\.onion:\d+ \(onion, through Tor at 127\.0\.0\.1:\d+\)\nsk:   accept: carrier .*\nsk:   HTTP 200, \d+ bytes\nhello from www\.example\.test\n/m,
        'sk fetch refuses the impostor and gets the page through the onion');
    like($r->{out}, qr/the impostor's access log: 0 requests/,
        '... the impostor received no request');
}
like($r->{out}, qr/^none: .*revoked \(Unbind\)/m, 'and sees the revocation');
like($r->{out}, qr/^   example\.test: 3 Binds, each with its DNSSEC-Chain/m,
    'a second name registered with DNSSEC evidence, on all three');
like($r->{out}, qr/^walkthrough: done$/m, 'to the end');
my @after = glob('/tmp/sk-walkthrough.*');
is(scalar @after, scalar @before, 'its temporary directory is gone');
done_testing();
