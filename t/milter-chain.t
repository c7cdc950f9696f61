#!/usr/bin/perl
# sk-milter keeps the chain Postfix serves carrying the carrier: writes
# ChainFile atomically, runs PostfixCommand only on a change, probes
# STARTTLS and 465-style TLS; `sk verify-chain --connect` passes; a new
# carrier is picked up; a carrier for another key is refused and the old
# chain kept.

use strict;
use warnings;
use FindBin;
use lib "$FindBin::Bin/lib";
use Test::More;
use SKTest;
use SKPostfix qw(make_cert);

my $skm = $ENV{SKM_BIN}
    // "$SKTest::ROOT/" . ($ENV{BUILD} // 'build') . '/sk-milter';
plan(skip_all => "no $skm") unless -x $skm;
plan(skip_all => 'no postfix') unless has_cmd('postfix');
plan(skip_all => 'sk has no carrier verb') if sk('help', 'carrier')->{rc};

my $dir = tmpdir();
my $cache = "$dir/cache";
mkdir $cache;
my ($key, $crt) = make_cert($dir, 'mx.example.org');
my ($okey, $ocrt) = make_cert($dir, 'other.example.org');
my $r = sk('keygen', '-n', 'mx.example.org', '-o', "$dir/sk.key",
    '--no-backups-i-accept-the-risk');
is($r->{rc}, 0, 'sk keygen') or diag($r->{err});

sub carrier {
    my ($cert, $out, @days) = @_;
    my $r = sk('carrier', '-k', "$dir/sk.key", '-c', $cert,
        '-n', 'mx.example.org', '-s', 'smtp,smtps,submission', @days,
        '-o', $out);
    is($r->{rc}, 0, "sk carrier $out") or diag($r->{err});
    $r = sk('publish', '-a', $out, '--cache', $cache);
    is($r->{rc}, 0, "sk publish $out") or diag($r->{err});
}
carrier($crt, "$dir/carrier1.pem", '-d', '30');

spew("$dir/source.pem", slurp($key) . slurp($crt), 0600);
spew("$dir/served.pem", slurp($key) . slurp($crt), 0600);

my $pf = SKPostfix->new(dir => $dir, chain => "$dir/served.pem");
$pf->start;

my ($mport, $xport) = (free_port(), free_port());
my $conf = join('', map { "$_\n" } "MetricsListen 127.0.0.1:$xport",
    "Socket inet:$mport\@127.0.0.1", 'Name mx.example.org', 'Syslog no',
    "KeyCache $cache", "ChainFile $dir/source.pem $dir/served.pem",
    "PostfixCommand postfix -c $pf->{etc} reload",
    "Probe starttls 127.0.0.1:$pf->{smtp}", "Probe tls 127.0.0.1:$pf->{smtps}",
    'RefreshInterval 1', 'ExpiryWarning 40');
spew("$dir/sk-milter.conf", $conf);
my $log = "$dir/milter.log";
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"], $log);

sub log_count {
    my ($re) = @_;
    return 0 unless -e $log;
    return scalar(() = slurp($log) =~ /$re/g);
}
ok(wait_until(sub { log_count(qr/probe tls .*carrier served/) }, 20),
    'probes after the first write') or diag(slurp($log));
like(slurp($log), qr/probe starttls 127\.0\.0\.1:\d+: carrier served for mx\.example\.org/,
    'STARTTLS probe saw the carrier');
like(slurp($log), qr/the carrier expires in 29 days/, 'expiry warning');

# The same in /metrics: both probes' handshakes saw the carrier, and its
# time to expiry is a little under 30 days.
my %mv = map { /^(\S+) (\S+)$/ ? ($1 => $2) : () } split /\n/,
    run_cmd(['curl', '-s', "http://127.0.0.1:$xport/metrics"])->{out};
cmp_ok($mv{'sk_milter_handshakes_total{result="carrier"}'} // 0, '>=', 2,
    'metrics: handshakes with the carrier served');
my $exp = $mv{"sk_milter_carrier_expiry_seconds{chainfile=\"$dir/source.pem\"}"}
    // 0;
ok($exp > 29 * 86400 && $exp <= 30 * 86400,
    "metrics: carrier expires in 29 to 30 days ($exp s)");
is((stat "$dir/served.pem")[2] & 07777, 0600, 'chain file mode 0600');
is(index(slurp("$dir/served.pem"), slurp("$dir/source.pem")), 0,
    'chain file starts with the source');
is(log_count(qr/ran "postfix/), 1, 'one reload');

for my $t (['starttls', $pf->{smtp}, '--starttls', 'smtp'],
    ['465 wrapper', $pf->{smtps}])
{
    my ($name, $port, @st) = @$t;
    $r = sk('verify-chain', '-p', "$dir/sk.key.pub", '--connect',
        "127.0.0.1:$port", @st);
    is($r->{rc}, 0, "sk verify-chain --connect ($name)")
        or diag($r->{out} . $r->{err});
    my @sc = ('openssl', 's_client', '-connect', "127.0.0.1:$port",
        '-showcerts', $name eq 'starttls' ? ('-starttls', 'smtp') : ());
    $r = run_cmd([@sc]);
    is(scalar(() = $r->{out} =~ /BEGIN CERTIFICATE/g), 2,
        "openssl s_client -showcerts ($name): leaf and carrier");
}

# Nothing changed: no rewrite, no reload, over several refreshes.
sleep 2.5;
is(log_count(qr/ran "postfix/), 1, 'unchanged: no further reload');

# A new carrier for the same key: rewritten, reloaded, served.
carrier($crt, "$dir/carrier2.pem", '-d', '60');
ok(wait_until(sub { log_count(qr/probe tls .*carrier served/) >= 2 }, 20),
    'new carrier: rewritten and probed') or diag(slurp($log));
my ($c2) = slurp("$dir/carrier2.pem") =~
    /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----)/s;
$r = run_cmd(['openssl', 's_client', '-connect', "127.0.0.1:$pf->{smtp}",
    '-starttls', 'smtp', '-showcerts']);
my @served = $r->{out} =~
    /(-----BEGIN CERTIFICATE-----.*?-----END CERTIFICATE-----)/sg;
is($served[-1], $c2, 'new handshakes see the new carrier');

sub metric {
    my ($name) = @_;
    my %mv = map { /^(\S+) (\S+)$/ ? ($1 => $2) : () } split /\n/,
        run_cmd(['curl', '-s', "http://127.0.0.1:$xport/metrics"])->{out};
    return $mv{$name};
}
my $src_exp = "sk_milter_carrier_expiry_seconds{chainfile=\"$dir/source.pem\"}";

# The KeyCache down: the chain file keeps carrier2, and its time left
# still counts down (it froze at the last KeyCache read before).
my $dead = free_port();
(my $down = $conf) =~ s/^KeyCache .*$/KeyCache redis:\/\/127.0.0.1:$dead/m;
spew("$dir/sk-milter.conf", $down);
kill 'HUP', $mpid;
ok(wait_until(sub { log_count(qr/; keeping \Q$dir\E\/served\.pem/) }, 10),
    'KeyCache down: the chain file kept') or diag(slurp($log));
my ($e1, $t1) = (metric($src_exp), time);
ok(wait_until(sub { time >= $t1 + 2 }, 5), '(2 s later)');
my $e2 = metric($src_exp);
ok(defined $e1 && defined $e2 && $e2 <= $e1 - 1 && $e1 > 59 * 86400,
    "metrics: carrier2's time left counts down with the KeyCache down "
    . "($e1 s, then $e2 s)");

# A SIGHUP that renames the ChainFile's SOURCE: its series moves, none is
# left behind for the old name.
spew("$dir/source2.pem", slurp("$dir/source.pem"), 0600);
$conf =~ s/^ChainFile \S+/ChainFile $dir\/source2.pem/m;
spew("$dir/sk-milter.conf", $conf);
kill 'HUP', $mpid;
my $src2_exp = "sk_milter_carrier_expiry_seconds{chainfile=\"$dir/source2.pem\"}";
ok(wait_until(sub { defined metric($src2_exp) }, 10),
    'SIGHUP, ChainFile renamed: a series for the new name')
    or diag(slurp($log));
ok(!defined metric($src_exp), '... and none left for the old one');

# Only a carrier for another key: refused, the old chain kept.
my $before = slurp("$dir/served.pem");
mkdir "$dir/empty";
my $ocar = "$dir/other-carrier.pem";
$r = sk('carrier', '-k', "$dir/sk.key", '-c', $ocrt, '-n',
    'mx.example.org', '-s', 'smtp', '-o', $ocar);
$conf =~ s/^KeyCache .*$/KeyCache $dir\/empty\nCarrierFile $ocar/m;
spew("$dir/sk-milter.conf", $conf);
kill 'HUP', $mpid;
ok(wait_until(sub { log_count(qr/it certifies another key; keeping/) }),
    'carrier for another key refused') or diag(slurp($log));
is(slurp("$dir/served.pem"), $before, 'old chain kept');
is(log_count(qr/ran "postfix/), 2, 'no reload for a refused carrier');

is(stop_daemon($mpid), 0, 'clean exit');
$pf->stop;
done_testing();
