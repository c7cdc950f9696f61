#!/usr/bin/perl
# sk-milter behind a private Postfix: per-message Authentication-Results
# for mail over STARTTLS and over plaintext (delivered to smtp-sink),
# forged results removed, Mode reject refusing the plaintext one, SIGHUP
# reloading the configuration.  Forged results under our authserv-id
# are removed in every form RFC 8601 allows (quoted, commented, folded).

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
for (qw(postfix smtp-sink swaks)) {
    plan(skip_all => "no $_") unless has_cmd($_);
}

my $dir = tmpdir();
my $mport = free_port();
my ($key, $crt) = make_cert($dir, 'mx.example.org');
spew("$dir/chain.pem", slurp($key) . slurp($crt), 0600);
spew("$dir/trust", "example.com smtp,smtps,submission\n"
    . "web.example https\n");

sub milter_conf {
    my (%o) = @_;
    spew("$dir/sk-milter.conf", join('', map { "$_\n" }
        "Socket inet:$mport\@127.0.0.1",
        "Name mx.example.org",
        "TrustFile $dir/trust",
        "Syslog no",
        "PidFile $dir/sk-milter.pid",
        "Mode " . ($o{mode} // 'verify')));
}

milter_conf();
my $mpid = run_daemon([$skm, '-f', '-c', "$dir/sk-milter.conf"],
    "$dir/milter.log");
ok(wait_for_port($mport), 'milter listens');
ok(wait_for_file("$dir/sk-milter.pid"), 'pid file written');

my $pf = SKPostfix->new(dir => $dir, milter => "inet:127.0.0.1:$mport",
    chain => "$dir/chain.pem")->start;

sub swaks {
    my (@args) = @_;
    return run_cmd(['swaks', '--server', '127.0.0.1', '--port', $pf->{smtp},
        '--to', 'bob@dest.example', '--timeout', '10', @args]);
}

my $r = swaks('--from', 'alice@example.com', '--tls',
    '--header', 'Subject: over tls',
    '--add-header', 'Authentication-Results: mx.example.org; sk=pass',
    '--add-header', 'Authentication-Results: "mx.example.org"; sk=pass',
    '--add-header', 'Authentication-Results: (c) "MX.Example.ORG" 1; sk=pass',
    '--add-header', "Authentication-Results: \"mx\\.example.org\";\n\tsk=pass",
    '--add-header', 'Authentication-Results: other.example; sk=pass');
is($r->{rc}, 0, 'swaks over STARTTLS') or diag($r->{out} . $pf->log);
$r = swaks('--from', 'alice@example.com', '--header', 'Subject: plaintext',
    '--add-header', 'X-Huge: ' . join("\n ", ('x' x 900) x 40));
is($r->{rc}, 0, 'swaks over plaintext') or diag($r->{out});
$r = swaks('--from', 'carol@web.example', '--header', 'Subject: no smtp');
is($r->{rc}, 0, 'swaks from a domain whose SK lacks smtp');
$r = swaks('--from', 'dave@nosk.example', '--header', 'Subject: no sk');
is($r->{rc}, 0, 'swaks from a domain with no SK');

ok($pf->wait_messages(4), 'four messages delivered (one with a 36 KB header)') or diag($pf->log);
my %m = map { /^Subject: (.*?)\r?$/m ? ($1 => $_) : () } $pf->messages;

like($m{'over tls'}, qr/^Authentication-Results:\s+mx\.example\.org;\s+sk=pass
    \ \(TLSv1\.[23]\ for\ smtp\ service\)\s+smtp\.mailfrom=example\.com
    \s+header\.from=example\.com/mx, 'sk=pass over STARTTLS');
my @ar = $m{'over tls'} =~ /^(Authentication-Results: [^;]*;)/mg;
is_deeply(\@ar, ['Authentication-Results: mx.example.org;',
    'Authentication-Results: other.example;'],
    'forged A-R with our authserv-id (plain, quoted, commented, folded) '
    . 'removed, the foreign one kept');
unlike($m{'over tls'}, qr/example\.org"/, 'no quoted forgery left');
like($m{plaintext}, qr/sk=fail \(plaintext for smtp service\)/,
    'sk=fail over plaintext');
like($m{plaintext}, qr/^X-Huge: x{900}\r?\n x{900}/m, 'the huge header arrived whole');
like($m{'no smtp'}, qr/sk=none \(sovereign key does not cover smtp\)/,
    'sk=none when the SK does not cover smtp');
like($m{'no sk'}, qr/sk=none \(no sovereign key\)/, 'sk=none with no SK');

# Mode reject, through SIGHUP.
milter_conf(mode => 'reject');
kill 'HUP', $mpid;
ok(wait_until(sub { slurp("$dir/milter.log") =~ /reloaded/ }), 'SIGHUP reload');
ok(daemon_alive($mpid), 'still running after SIGHUP');
$r = swaks('--from', 'alice@example.com', '--header', 'Subject: refused');
isnt($r->{rc}, 0, 'Mode reject refuses plaintext mail');
like($r->{out}, qr/550 5\.7\.1 sk-milter: sovereign key policy: plaintext for smtp service/,
    '5.7.1 reply names the reason');
$r = swaks('--from', 'alice@example.com', '--tls', '--header', 'Subject: ok');
is($r->{rc}, 0, 'Mode reject accepts TLS mail');

# A broken configuration on SIGHUP keeps the running one.
spew("$dir/sk-milter.conf", "Socket nowhere\n");
kill 'HUP', $mpid;
ok(wait_until(sub { slurp("$dir/milter.log") =~ /reload failed/ }),
    'broken reload is logged');
$r = swaks('--from', 'alice@example.com', '--header', 'Subject: refused2');
like($r->{out}, qr/550 5\.7\.1/, 'old configuration still in force');

# A dead milter is a tempfail (milter_default_action), not a pass.
my $st = stop_daemon($mpid);
is($st, 0, 'SIGTERM: clean exit');
ok(!-e "$dir/sk-milter.pid", 'pid file removed');
$r = swaks('--from', 'alice@example.com', '--header', 'Subject: dead');
like($r->{out}, qr/\b4\d\d /, 'dead milter: mail tempfailed');

$pf->stop;
done_testing();
