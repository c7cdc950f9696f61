#!/usr/bin/perl
# sk-timeline OCSP for Bind: a real `openssl ocsp` responder on loopback,
# named in each end-entity certificate's AIA.  Good: accepted; revoked or
# unknown: 403 naming the rule; responder down or silent: 408; answers
# cached; ocsp_require refuses certificates that name no responder.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use IO::Socket::INET;
use POSIX qw(strftime);
use Time::HiRes qw(sleep);
use SKTest;
use SKTimeline;

plan skip_all => 'sk-timeline not built' unless -x $SKTimeline::TL;
plan skip_all => 'no openssl or curl' unless has_cmd('openssl') && has_cmd('curl');

my $d = tmpdir();
my $op = ed25519_key($d, 'operator');
my $ca = make_ca($d, 'testca');
my $oport = free_port();
my $aia = "authorityInfoAccess=OCSP;URI:http://127.0.0.1:$oport/\n";
my %sk = map { $_ => ed25519_key($d, $_) } qw(good revoked unknown down slow
    plain quick);
my %crt = map { $_ => issue($d, $ca, $sk{$_}, "$_.com", "$d/$_",
    $_ eq 'plain' || $_ eq 'quick' ? '' : $aia) } keys %sk;
# A silent responder: accepts connections (the backlog), never answers.
my $silent = IO::Socket::INET->new(Listen => 5, LocalAddr => '127.0.0.1',
    LocalPort => 0, Proto => 'tcp', ReuseAddr => 1) or die "listen: $!";
$crt{slow} = issue($d, $ca, $sk{slow}, 'slow.com', "$d/slow",
    "authorityInfoAccess=OCSP;URI:http://127.0.0.1:" . $silent->sockport
    . "/\n");

# The CA's index: good and revoked listed; "unknown" and "down" are not.
sub index_line {
    my ($name, $revoked) = @_;
    my ($serial) = ossl_out('x509', '-in', $crt{$name}, '-noout', '-serial')
        =~ /serial=(\S+)/;
    my $exp = strftime('%y%m%d%H%M%SZ', gmtime(time + 86400 * 300));
    my $rev = $revoked ? strftime('%y%m%d%H%M%SZ', gmtime(time - 60)) : '';
    return join("\t", $revoked ? 'R' : 'V', $exp, $rev, $serial, 'unknown',
        "/CN=$name.com") . "\n";
}
sub ossl_out { return run_cmd(['openssl', @_])->{out} }
spew("$d/index.txt", index_line('good') . index_line('revoked', 1)
    . index_line('slow'));

my $ocsp = run_daemon(['openssl', 'ocsp', '-index', "$d/index.txt",
    '-port', $oport, '-rsigner', "$ca.crt", '-rkey', "$ca.key",
    '-CA', "$ca.crt", '-nmin', '60'], "$d/ocsp.log");
# Not wait_for_port: OpenSSL 3.0's responder hangs after a connection that
# sends no request.
ok(wait_until(sub { -e "$d/ocsp.log" && slurp("$d/ocsp.log")
    =~ /waiting for OCSP client connections/ }, 10),
    'openssl ocsp responder listens')
    or BAIL_OUT(slurp("$d/ocsp.log"));

my $t = start_timeline($d, operator_key => "$d/operator.pub",
    ocsp_timeout_ms => 1500);
ok($t->{up}, 'sk-timeline listens') or BAIL_OUT(slurp($t->{log}));

my $r;
sub expect {
    my ($name, $code, $re, $what) = @_;
    $r = append($t, bind_entry(name => "$name.com", key => $sk{$name},
        chain => [$crt{$name}]));
    is($r->{code}, $code, "$what: $code")
        and ($re ? like($r->{body}, $re, "$what: says why") : pass($what))
        or diag($r->{body});
}

$r = append($t, root_entry(cert => "$ca.crt", key => $op));
is($r->{code}, 201, 'Add-Root-CA');
expect('good', 201, qr/^Name: good.com$/m, 'OCSP good');
expect('revoked', 403, qr/^bind: ocsp: http:\/\/127.0.0.1:$oport\/ says the certificate is revoked$/,
    'OCSP revoked');
expect('unknown', 403, qr/^bind: ocsp: .* says the certificate is unknown$/,
    'OCSP unknown');
expect('plain', 201, undef, 'no responder named, ocsp_require off');
my $t0 = time;
expect('slow', 408, qr/^bind: ocsp: no definite answer: responder http:\/\/127.0.0.1:\d+\/: Timeout/i,
    'silent responder: validation timed out');
ok(time - $t0 < 10, '... within the timeout');

# An append waiting for a responder leaves its CPU to the others (at most
# one append per CPU checks at once): with more of them waiting than the
# machine has CPUs, an entry that names no responder is answered at once,
# not after their timeouts.
my $cpus = (run_cmd(['nproc'])->{out} // '') =~ /(\d+)/ ? $1 : 2;
my $slow = bind_entry(name => 'slow.com', key => $sk{slow},
    chain => [$crt{slow}]);
my @waiting = map {
    my $pid = fork() // die "fork: $!";
    if ($pid == 0) {
        POSIX::_exit(append($t, $slow)->{code} == 408 ? 0 : 1);
    }
    $pid;
} 1 .. $cpus + 2;
sleep 0.5;
$t0 = Time::HiRes::time();
expect('quick', 201, undef, "no responder named, $cpus+2 appends waiting on "
    . 'a silent one');
my $took = Time::HiRes::time() - $t0;
ok($took < 1.2, "... answered in ${took}s, before their 1.5 s timeout");
my $timed_out = grep { waitpid($_, 0) == $_ && $? == 0 } @waiting;
is($timed_out, $cpus + 2, '... and each waiting one got its 408');

# The responder goes away: cached answers stand, new certificates get 408.
stop_daemon($ocsp);
expect('good', 403, qr/^bind: good.com already has a Bind/,
    'cached good answer (the state check is reached)');
expect('revoked', 403, qr/revoked/, 'cached revoked answer');
expect('down', 408, qr/^bind: ocsp: no definite answer: responder .*: (Couldn't connect|Could not connect|Connection refused)/i,
    'responder down: 408');

my $st = http('GET', "$t->{url}/status");
like($st->{body}, qr/^Tree-Size: 8$/m,
    'only the root, good, plain and quick stored (each with its Map-Root '
    . 'entry)');

# ocsp_require: a certificate naming no responder is refused.
stop_daemon($t->{pid});
$t->{conf}{ocsp_require} = 'yes';
restart_timeline($t);
ok($t->{up}, 'restarts with ocsp_require');
$r = append($t, bind_entry(name => 'plain2.com', key => $sk{plain},
    chain => [issue($d, $ca, $sk{plain}, 'plain2.com', "$d/plain3")]));
is($r->{code}, 403, 'ocsp_require, no responder named: 403');
like($r->{body}, qr/^bind: ocsp: end-entity certificate names no OCSP responder$/,
    '... naming the rule');
stop_daemon($t->{pid});
unlike(slurp($t->{log}), qr/Sanitizer|runtime error/, 'no sanitizer reports');

done_testing();
