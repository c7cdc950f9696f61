package SKTest;

# SKTest -- what the t/*.t integration tests share (core Perl only).
#
#   use FindBin; use lib "$FindBin::Bin/lib"; use SKTest;
#
#   tmpdir()                  a fresh directory, removed at exit even when a
#                             test dies (kept if SK_TEST_KEEP is set)
#   free_port()               a free TCP port on 127.0.0.1 (bind port 0)
#   run_daemon([CMD...], LOG) fork and exec CMD with stdout and stderr to
#                             LOG (appended); returns the pid.  Leftovers are
#                             killed in an END block
#   stop_daemon(PID[, SECS])  TERM, wait up to SECS (5), then KILL; returns
#                             PID's wait status ($?), also if it had exited
#                             already; undef for a PID run_daemon never made
#   daemon_alive(PID)         1 while PID runs (reaps it when it exits)
#   wait_until(CODE[, SECS])  poll CODE every 0.1 s up to SECS (10); its
#                             last value
#   wait_for_file(PATH[, SECS])   1 once PATH exists and is not empty
#   wait_for_port(PORT[, SECS, HOST])  1 once HOST:PORT accepts
#   sk(ARGS...)               run the sk binary ($ENV{SK_BIN}, else
#                             $BUILD/sk from the top of the tree, BUILD
#                             defaulting to "build"); returns
#                             { out => STDOUT, err => STDERR, rc => exit
#                             code (-1 if killed by a signal) }
#   run_cmd([CMD...])         the same for any command
#   has_cmd(NAME)             full path of NAME in PATH (plus /usr/sbin and
#                             /sbin), or undef: for plan skip_all
#   slurp(PATH)               a file's bytes
#   spew(PATH, BYTES[, MODE]) write a file (mode 0644 unless given)
#   $SKTest::SK               the sk binary sk() runs
#
# Tests run from anywhere; paths here are absolute.

use strict;
use warnings;

use Exporter 'import';
use Cwd qw(abs_path);
use File::Basename qw(dirname);
use File::Spec;
use File::Temp qw(tempdir);
use IO::Socket::INET;
use POSIX qw(:sys_wait_h);
use Time::HiRes qw(sleep time);

our @EXPORT = qw(tmpdir free_port run_daemon stop_daemon daemon_alive
    wait_until wait_for_file wait_for_port sk run_cmd has_cmd slurp spew);

our $ROOT = abs_path(dirname(__FILE__) . '/../..');
our $SK = $ENV{SK_BIN} // "$ROOT/" . ($ENV{BUILD} // 'build') . '/sk';

my %daemons;        # pid => command, for the END block
my %status;         # pid => wait status, of daemons reaped while polling

sub tmpdir {
    return tempdir('sk-t.XXXXXX', TMPDIR => 1,
        CLEANUP => !$ENV{SK_TEST_KEEP});
}

# A port below the kernel's ephemeral range: a port the kernel gave out
# for LocalPort 0 could be given again to any outgoing connection (a tor
# relay's, a client's) before the daemon it is meant for binds it.  Never
# the same one twice in one test process.
my %given_port;
sub free_port {
    my ($lo) = split ' ', (eval { slurp('/proc/sys/net/ipv4/ip_local_port_range') }
        // '32768');
    $lo = 32768 unless $lo && $lo > 12000;
    for (1 .. 1000) {
        my $port = 10000 + int(rand($lo - 10000));
        next if $given_port{$port};
        my $s = IO::Socket::INET->new(Listen => 1, LocalAddr => '127.0.0.1',
            LocalPort => $port, Proto => 'tcp', ReuseAddr => 1) or next;
        close $s;
        $given_port{$port} = 1;
        return $port;
    }
    die "free_port: no free port below $lo";
}

sub run_daemon {
    my ($cmd, $log) = @_;

    my $pid = fork;
    die "run_daemon: fork: $!" unless defined $pid;
    if ($pid == 0) {
        # Own process group, so a signal to the test's group (^C from
        # prove) does not race our own TERM/KILL.
        POSIX::setpgid(0, 0);
        open STDIN, '<', '/dev/null' or POSIX::_exit(127);
        open STDOUT, '>>', $log or POSIX::_exit(127);
        open STDERR, '>&', \*STDOUT or POSIX::_exit(127);
        exec @$cmd or POSIX::_exit(127);
    }
    $daemons{$pid} = "@$cmd";
    return $pid;
}

sub daemon_alive {
    my ($pid) = @_;

    return 0 unless exists $daemons{$pid};
    return 1 if waitpid($pid, WNOHANG) == 0;
    $status{$pid} = $?;
    delete $daemons{$pid};
    return 0;
}

sub stop_daemon {
    my ($pid, $secs) = @_;

    if (!exists $daemons{$pid}) {
        return delete $status{$pid};
    }
    kill 'TERM', $pid;
    my $gone = wait_until(sub { !daemon_alive($pid) }, $secs // 5);
    if (!$gone) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
        delete $daemons{$pid};
        return $?;
    }
    return delete $status{$pid};
}

sub wait_until {
    my ($code, $secs) = @_;
    my $end = time + ($secs // 10);
    my $v;

    while (1) {
        $v = $code->();
        return $v if $v || time >= $end;
        sleep 0.1;
    }
}

sub wait_for_file {
    my ($path, $secs) = @_;
    return wait_until(sub { -s $path ? 1 : 0 }, $secs) ? 1 : 0;
}

sub wait_for_port {
    my ($port, $secs, $host) = @_;
    return wait_until(sub {
        my $s = IO::Socket::INET->new(PeerAddr => $host // '127.0.0.1',
            PeerPort => $port, Proto => 'tcp', Timeout => 1);
        close $s if $s;
        return $s ? 1 : 0;
    }, $secs) ? 1 : 0;
}

sub run_cmd {
    my ($cmd) = @_;
    my $dir = tmpdir();
    my ($out, $err) = ("$dir/out", "$dir/err");

    my $pid = fork;
    die "run_cmd: fork: $!" unless defined $pid;
    if ($pid == 0) {
        open STDIN, '<', '/dev/null' or POSIX::_exit(127);
        open STDOUT, '>', $out or POSIX::_exit(127);
        open STDERR, '>', $err or POSIX::_exit(127);
        exec @$cmd or POSIX::_exit(127);
    }
    waitpid($pid, 0);
    my $status = $?;
    return {
        out => slurp($out),
        err => slurp($err),
        rc  => WIFEXITED($status) ? WEXITSTATUS($status) : -1,
    };
}

sub sk {
    return run_cmd([$SK, @_]);
}

sub has_cmd {
    my ($name) = @_;

    for my $d (File::Spec->path, '/usr/sbin', '/sbin') {
        my $p = "$d/$name";
        return $p if -f $p && -x _;
    }
    return undef;
}

sub slurp {
    my ($path) = @_;
    open my $f, '<:raw', $path or die "slurp $path: $!";
    local $/;
    my $data = <$f>;
    close $f;
    return $data // '';
}

sub spew {
    my ($path, $data, $mode) = @_;
    open my $f, '>:raw', $path or die "spew $path: $!";
    print $f $data;
    close $f or die "spew $path: $!";
    chmod $mode // 0644, $path or die "chmod $path: $!";
}

END {
    # Whatever a failed or dying test left running.  Keep $? (the test's
    # exit status) intact.
    local $?;
    for my $pid (keys %daemons) {
        kill 'KILL', $pid;
        waitpid($pid, 0);
    }
}

1;
